`timescale 1 ps/1 ps

// Differential testbench for counter_gray4: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst_n;
	reg en;
	wire [3:0] gray_ref;
	wire [3:0] gray_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2350;
	integer r;
	integer t;
	reg check = 0;
	integer errors_gray = 0;

	RefModule good1 (
		.clk(clk),
		.rst_n(rst_n),
		.en(en),
		.gray(gray_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst_n(rst_n),
		.en(en),
		.gray(gray_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({gray_ref} !== {gray_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (gray_ref !== gray_dut) errors_gray = errors_gray + 1;
		end
	end

	initial begin
		en = 0;
		rst_n = 1'b0;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (400) begin
			@(negedge clk);
			en <= ($random(seed) & 3) != 0;
			r = $random(seed);
			rst_n <= ((r & 127) == 0) ? 1'b0 : 1'b1;
		end
		@(negedge clk);
		#1;
		if (errors_gray) $display("Hint: Output '%s' has %0d mismatches.", "gray", errors_gray);
		else $display("Hint: Output '%s' has no mismatches.", "gray");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
