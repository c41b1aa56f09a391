`timescale 1 ps/1 ps

// Differential testbench for counter_updown4_arst_n: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst_n;
	reg en;
	reg up;
	wire [3:0] count_ref;
	wire [3:0] count_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 3326;
	integer r;
	integer t;
	reg check = 0;
	integer errors_count = 0;

	RefModule good1 (
		.clk(clk),
		.rst_n(rst_n),
		.en(en),
		.up(up),
		.count(count_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst_n(rst_n),
		.en(en),
		.up(up),
		.count(count_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({count_ref} !== {count_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (count_ref !== count_dut) errors_count = errors_count + 1;
		end
	end

	initial begin
		en = 0; up = 1;
		rst_n = 1'b0;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (400) begin
			@(negedge clk);
			en <= ($random(seed) & 3) != 0;
			if (($random(seed) & 15) == 0) up <= ~up;
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
