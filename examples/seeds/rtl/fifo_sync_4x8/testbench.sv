`timescale 1 ps/1 ps

// Differential testbench for fifo_sync_4x8: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst;
	reg push;
	reg pop;
	reg [7:0] din;
	wire [7:0] dout_ref;
	wire [7:0] dout_dut;
	wire full_ref;
	wire full_dut;
	wire empty_ref;
	wire empty_dut;
	wire [2:0] count_ref;
	wire [2:0] count_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2283;
	integer r;
	integer t;
	reg check = 0;
	integer errors_dout = 0;
	integer errors_full = 0;
	integer errors_empty = 0;
	integer errors_count = 0;

	RefModule good1 (
		.clk(clk),
		.rst(rst),
		.push(push),
		.pop(pop),
		.din(din),
		.dout(dout_ref),
		.full(full_ref),
		.empty(empty_ref),
		.count(count_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst(rst),
		.push(push),
		.pop(pop),
		.din(din),
		.dout(dout_dut),
		.full(full_dut),
		.empty(empty_dut),
		.count(count_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({dout_ref, full_ref, empty_ref, count_ref} !== {dout_dut, full_dut, empty_dut, count_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (dout_ref !== dout_dut) errors_dout = errors_dout + 1;
			if (full_ref !== full_dut) errors_full = errors_full + 1;
			if (empty_ref !== empty_dut) errors_empty = errors_empty + 1;
			if (count_ref !== count_dut) errors_count = errors_count + 1;
		end
	end

	initial begin
		push = 0; pop = 0; din = 0; r = 0;
		rst = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (600) begin
			@(negedge clk);
			// alternate between filling and draining phases so both full and empty are reached often
			if (($random(seed) & 31) == 0) r = ~r;
			push <= r[0] ? (($random(seed) & 3) != 0) : (($random(seed) & 3) == 0);
			pop <= r[0] ? (($random(seed) & 3) == 0) : (($random(seed) & 3) != 0);
			din <= $random(seed);
			r = $random(seed);
			rst <= ((r & 63) == 0) ? 1'b1 : 1'b0;
		end
		@(negedge clk);
		#1;
		if (errors_dout) $display("Hint: Output '%s' has %0d mismatches.", "dout", errors_dout);
		else $display("Hint: Output '%s' has no mismatches.", "dout");
		if (errors_full) $display("Hint: Output '%s' has %0d mismatches.", "full", errors_full);
		else $display("Hint: Output '%s' has no mismatches.", "full");
		if (errors_empty) $display("Hint: Output '%s' has %0d mismatches.", "empty", errors_empty);
		else $display("Hint: Output '%s' has no mismatches.", "empty");
		if (errors_count) $display("Hint: Output '%s' has %0d mismatches.", "count", errors_count);
		else $display("Hint: Output '%s' has no mismatches.", "count");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
