`timescale 1 ps/1 ps

// Differential testbench for counter_mod10_tc: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst;
	reg en;
	wire [3:0] q_ref;
	wire [3:0] q_dut;
	wire carry_ref;
	wire carry_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2590;
	integer r;
	integer t;
	reg check = 0;
	integer errors_q = 0;
	integer errors_carry = 0;

	RefModule good1 (
		.clk(clk),
		.rst(rst),
		.en(en),
		.q(q_ref),
		.carry(carry_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst(rst),
		.en(en),
		.q(q_dut),
		.carry(carry_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({q_ref, carry_ref} !== {q_dut, carry_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (q_ref !== q_dut) errors_q = errors_q + 1;
			if (carry_ref !== carry_dut) errors_carry = errors_carry + 1;
		end
	end

	initial begin
		en = 0;
		rst = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (400) begin
			@(negedge clk);
			en <= ($random(seed) & 3) != 0;
			r = $random(seed);
			rst <= ((r & 63) == 0) ? 1'b1 : 1'b0;
		end
		@(negedge clk);
		#1;
		if (errors_q) $display("Hint: Output '%s' has %0d mismatches.", "q", errors_q);
		else $display("Hint: Output '%s' has no mismatches.", "q");
		if (errors_carry) $display("Hint: Output '%s' has %0d mismatches.", "carry", errors_carry);
		else $display("Hint: Output '%s' has no mismatches.", "carry");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
