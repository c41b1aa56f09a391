`timescale 1 ps/1 ps

// Differential testbench for fsm_moore_1011: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst;
	reg din;
	wire detected_ref;
	wire detected_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2257;
	integer r;
	integer t;
	reg check = 0;
	integer errors_detected = 0;

	RefModule good1 (
		.clk(clk),
		.rst(rst),
		.din(din),
		.detected(detected_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst(rst),
		.din(din),
		.detected(detected_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({detected_ref} !== {detected_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (detected_ref !== detected_dut) errors_detected = errors_detected + 1;
		end
	end

	initial begin
		din = 0;
		rst = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (500) begin
			@(negedge clk);
			din <= $random(seed);
			r = $random(seed);
			rst <= ((r & 127) == 0) ? 1'b1 : 1'b0;
		end
		@(negedge clk);
		#1;
		if (errors_detected) $display("Hint: Output '%s' has %0d mismatches.", "detected", errors_detected);
		else $display("Hint: Output '%s' has no mismatches.", "detected");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
