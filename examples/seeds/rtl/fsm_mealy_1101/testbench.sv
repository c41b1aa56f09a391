`timescale 1 ps/1 ps

// Differential testbench for fsm_mealy_1101: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst_n;
	reg din;
	wire z_ref;
	wire z_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2247;
	integer r;
	integer t;
	reg check = 0;
	integer errors_z = 0;

	RefModule good1 (
		.clk(clk),
		.rst_n(rst_n),
		.din(din),
		.z(z_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst_n(rst_n),
		.din(din),
		.z(z_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({z_ref} !== {z_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (z_ref !== z_dut) errors_z = errors_z + 1;
		end
	end

	initial begin
		din = 0;
		rst_n = 1'b0;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (500) begin
			@(negedge clk);
			din <= $random(seed);
			r = $random(seed);
			if ((r & 127) == 0) begin
				// assert between edges and hold across the next rising edge
				#2 rst_n = 1'b0;
			end else if ((r & 127) == 1) begin
				// short pulse that ends before the next rising edge: only an async reset sees it
				#1 rst_n = 1'b0;
				#2 rst_n = 1'b1;
			end else begin
				rst_n <= 1'b1;
			end
		end
		@(negedge clk);
		#1;
		if (errors_z) $display("Hint: Output '%s' has %0d mismatches.", "z", errors_z);
		else $display("Hint: Output '%s' has no mismatches.", "z");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
