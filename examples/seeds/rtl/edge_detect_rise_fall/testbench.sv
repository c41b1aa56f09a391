`timescale 1 ps/1 ps

// Differential testbench for edge_detect_rise_fall: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg areset;
	reg din;
	wire rise_ref;
	wire rise_dut;
	wire fall_ref;
	wire fall_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 3173;
	integer r;
	integer t;
	reg check = 0;
	integer errors_rise = 0;
	integer errors_fall = 0;

	RefModule good1 (
		.clk(clk),
		.areset(areset),
		.din(din),
		.rise(rise_ref),
		.fall(fall_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.areset(areset),
		.din(din),
		.rise(rise_dut),
		.fall(fall_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({rise_ref, fall_ref} !== {rise_dut, fall_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (rise_ref !== rise_dut) errors_rise = errors_rise + 1;
			if (fall_ref !== fall_dut) errors_fall = errors_fall + 1;
		end
	end

	initial begin
		din = 0;
		areset = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (400) begin
			@(negedge clk);
			if (($random(seed) & 3) == 0) din <= ~din;
			r = $random(seed);
			if ((r & 63) == 0) begin
				// assert between edges and hold across the next rising edge
				#2 areset = 1'b1;
			end else if ((r & 63) == 1) begin
				// short pulse that ends before the next rising edge: only an async reset sees it
				#1 areset = 1'b1;
				#2 areset = 1'b0;
			end else begin
				areset <= 1'b0;
			end
		end
		@(negedge clk);
		#1;
		if (errors_rise) $display("Hint: Output '%s' has %0d mismatches.", "rise", errors_rise);
		else $display("Hint: Output '%s' has no mismatches.", "rise");
		if (errors_fall) $display("Hint: Output '%s' has %0d mismatches.", "fall", errors_fall);
		else $display("Hint: Output '%s' has no mismatches.", "fall");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
