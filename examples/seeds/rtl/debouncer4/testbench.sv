`timescale 1 ps/1 ps

// Differential testbench for debouncer4: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst_n;
	reg noisy;
	wire clean_ref;
	wire clean_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2003;
	integer r;
	integer t;
	reg check = 0;
	integer errors_clean = 0;

	RefModule good1 (
		.clk(clk),
		.rst_n(rst_n),
		.noisy(noisy),
		.clean(clean_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst_n(rst_n),
		.noisy(noisy),
		.clean(clean_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({clean_ref} !== {clean_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (clean_ref !== clean_dut) errors_clean = errors_clean + 1;
		end
	end

	initial begin
		noisy = 0;
		rst_n = 1'b0;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (600) begin
			@(negedge clk);
			if (($random(seed) % 5) == 0) noisy <= ~noisy;
			r = $random(seed);
			rst_n <= ((r & 127) == 0) ? 1'b0 : 1'b1;
		end
		@(negedge clk);
		#1;
		if (errors_clean) $display("Hint: Output '%s' has %0d mismatches.", "clean", errors_clean);
		else $display("Hint: Output '%s' has no mismatches.", "clean");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
