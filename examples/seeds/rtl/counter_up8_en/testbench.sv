`timescale 1 ps/1 ps

// Differential testbench for counter_up8_en: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst;
	reg en;
	wire [7:0] count_ref;
	wire [7:0] count_dut;
	wire tc_ref;
	wire tc_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2454;
	integer r;
	integer t;
	reg check = 0;
	integer errors_count = 0;
	integer errors_tc = 0;

	RefModule good1 (
		.clk(clk),
		.rst(rst),
		.en(en),
		.count(count_ref),
		.tc(tc_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst(rst),
		.en(en),
		.count(count_dut),
		.tc(tc_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({count_ref, tc_ref} !== {count_dut, tc_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (count_ref !== count_dut) errors_count = errors_count + 1;
			if (tc_ref !== tc_dut) errors_tc = errors_tc + 1;
		end
	end

	initial begin
		en = 0;
		rst = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (600) begin
			@(negedge clk);
			en <= ($random(seed) & 7) != 0;
			r = $random(seed);
			rst <= ((r & 255) == 0) ? 1'b1 : 1'b0;
		end
		@(negedge clk);
		#1;
		if (errors_count) $display("Hint: Output '%s' has %0d mismatches.", "count", errors_count);
		else $display("Hint: Output '%s' has no mismatches.", "count");
		if (errors_tc) $display("Hint: Output '%s' has %0d mismatches.", "tc", errors_tc);
		else $display("Hint: Output '%s' has no mismatches.", "tc");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
