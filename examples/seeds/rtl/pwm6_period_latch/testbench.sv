`timescale 1 ps/1 ps

// Differential testbench for pwm6_period_latch: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst;
	reg [5:0] duty;
	wire pwm_ref;
	wire pwm_dut;
	wire period_start_ref;
	wire period_start_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2751;
	integer r;
	integer t;
	reg check = 0;
	integer errors_pwm = 0;
	integer errors_period_start = 0;

	RefModule good1 (
		.clk(clk),
		.rst(rst),
		.duty(duty),
		.pwm(pwm_ref),
		.period_start(period_start_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst(rst),
		.duty(duty),
		.pwm(pwm_dut),
		.period_start(period_start_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({pwm_ref, period_start_ref} !== {pwm_dut, period_start_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (pwm_ref !== pwm_dut) errors_pwm = errors_pwm + 1;
			if (period_start_ref !== period_start_dut) errors_period_start = errors_period_start + 1;
		end
	end

	initial begin
		duty = 0;
		rst = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (700) begin
			@(negedge clk);
			duty <= $random(seed);
			r = $random(seed);
			rst <= ((r & 127) == 0) ? 1'b1 : 1'b0;
		end
		@(negedge clk);
		#1;
		if (errors_pwm) $display("Hint: Output '%s' has %0d mismatches.", "pwm", errors_pwm);
		else $display("Hint: Output '%s' has no mismatches.", "pwm");
		if (errors_period_start) $display("Hint: Output '%s' has %0d mismatches.", "period_start", errors_period_start);
		else $display("Hint: Output '%s' has no mismatches.", "period_start");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
