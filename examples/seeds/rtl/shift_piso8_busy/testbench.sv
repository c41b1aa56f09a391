`timescale 1 ps/1 ps

// Differential testbench for shift_piso8_busy: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst_n;
	reg load;
	reg [7:0] din;
	wire sout_ref;
	wire sout_dut;
	wire busy_ref;
	wire busy_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2682;
	integer r;
	integer t;
	reg check = 0;
	integer errors_sout = 0;
	integer errors_busy = 0;

	RefModule good1 (
		.clk(clk),
		.rst_n(rst_n),
		.load(load),
		.din(din),
		.sout(sout_ref),
		.busy(busy_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst_n(rst_n),
		.load(load),
		.din(din),
		.sout(sout_dut),
		.busy(busy_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({sout_ref, busy_ref} !== {sout_dut, busy_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (sout_ref !== sout_dut) errors_sout = errors_sout + 1;
			if (busy_ref !== busy_dut) errors_busy = errors_busy + 1;
		end
	end

	initial begin
		load = 0; din = 0;
		rst_n = 1'b0;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (500) begin
			@(negedge clk);
			load <= ($random(seed) & 15) == 0;
			din <= $random(seed);
			r = $random(seed);
			if ((r & 63) == 0) begin
				// assert between edges and hold across the next rising edge
				#2 rst_n = 1'b0;
			end else if ((r & 63) == 1) begin
				// short pulse that ends before the next rising edge: only an async reset sees it
				#1 rst_n = 1'b0;
				#2 rst_n = 1'b1;
			end else begin
				rst_n <= 1'b1;
			end
		end
		@(negedge clk);
		#1;
		if (errors_sout) $display("Hint: Output '%s' has %0d mismatches.", "sout", errors_sout);
		else $display("Hint: Output '%s' has no mismatches.", "sout");
		if (errors_busy) $display("Hint: Output '%s' has %0d mismatches.", "busy", errors_busy);
		else $display("Hint: Output '%s' has no mismatches.", "busy");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
