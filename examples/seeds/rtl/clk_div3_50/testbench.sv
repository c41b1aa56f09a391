`timescale 1 ps/1 ps

// Differential testbench for clk_div3_50: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst_n;
	wire clk_out_ref;
	wire clk_out_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 1979;
	integer r;
	integer t;
	reg check = 0;
	integer errors_clk_out = 0;

	RefModule good1 (
		.clk(clk),
		.rst_n(rst_n),
		.clk_out(clk_out_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst_n(rst_n),
		.clk_out(clk_out_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({clk_out_ref} !== {clk_out_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (clk_out_ref !== clk_out_dut) errors_clk_out = errors_clk_out + 1;
		end
	end

	initial begin
		rst_n = 1'b0;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (400) begin
			@(negedge clk);
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
		if (errors_clk_out) $display("Hint: Output '%s' has %0d mismatches.", "clk_out", errors_clk_out);
		else $display("Hint: Output '%s' has no mismatches.", "clk_out");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
