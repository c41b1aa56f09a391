`timescale 1 ps/1 ps

// Differential testbench for shift_sipo8_done: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst;
	reg en;
	reg din;
	wire [7:0] q_ref;
	wire [7:0] q_dut;
	wire done_ref;
	wire done_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2653;
	integer r;
	integer t;
	reg check = 0;
	integer errors_q = 0;
	integer errors_done = 0;

	RefModule good1 (
		.clk(clk),
		.rst(rst),
		.en(en),
		.din(din),
		.q(q_ref),
		.done(done_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst(rst),
		.en(en),
		.din(din),
		.q(q_dut),
		.done(done_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({q_ref, done_ref} !== {q_dut, done_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (q_ref !== q_dut) errors_q = errors_q + 1;
			if (done_ref !== done_dut) errors_done = errors_done + 1;
		end
	end

	initial begin
		en = 0; din = 0;
		rst = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (500) begin
			@(negedge clk);
			en <= ($random(seed) & 3) != 0;
			din <= $random(seed);
			r = $random(seed);
			rst <= ((r & 127) == 0) ? 1'b1 : 1'b0;
		end
		@(negedge clk);
		#1;
		if (errors_q) $display("Hint: Output '%s' has %0d mismatches.", "q", errors_q);
		else $display("Hint: Output '%s' has no mismatches.", "q");
		if (errors_done) $display("Hint: Output '%s' has %0d mismatches.", "done", errors_done);
		else $display("Hint: Output '%s' has no mismatches.", "done");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
