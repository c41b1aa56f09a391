`timescale 1 ps/1 ps

// Differential testbench for alu8_flags: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg [7:0] a;
	reg [7:0] b;
	reg [2:0] op;
	wire [7:0] y_ref;
	wire [7:0] y_dut;
	wire zero_ref;
	wire zero_dut;
	wire carry_ref;
	wire carry_dut;
	wire negative_ref;
	wire negative_dut;
	wire overflow_ref;
	wire overflow_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 1998;
	integer r;
	integer t;
	reg check = 0;
	integer errors_y = 0;
	integer errors_zero = 0;
	integer errors_carry = 0;
	integer errors_negative = 0;
	integer errors_overflow = 0;

	RefModule good1 (
		.a(a),
		.b(b),
		.op(op),
		.y(y_ref),
		.zero(zero_ref),
		.carry(carry_ref),
		.negative(negative_ref),
		.overflow(overflow_ref)
	);
	TopModule top_module1 (
		.a(a),
		.b(b),
		.op(op),
		.y(y_dut),
		.zero(zero_dut),
		.carry(carry_dut),
		.negative(negative_dut),
		.overflow(overflow_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({y_ref, zero_ref, carry_ref, negative_ref, overflow_ref} !== {y_dut, zero_dut, carry_dut, negative_dut, overflow_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (y_ref !== y_dut) errors_y = errors_y + 1;
			if (zero_ref !== zero_dut) errors_zero = errors_zero + 1;
			if (carry_ref !== carry_dut) errors_carry = errors_carry + 1;
			if (negative_ref !== negative_dut) errors_negative = errors_negative + 1;
			if (overflow_ref !== overflow_dut) errors_overflow = errors_overflow + 1;
		end
	end

	initial begin
		a = 0; b = 0; op = 0;
		check = 1'b1;
		repeat (300) begin
			@(negedge clk);
			t = $random(seed);
			a <= t;
			// b sometimes equals a or ~a so that SUB/XOR/AND produce zero results
			r = $random(seed);
			b <= ((r & 7) == 0) ? t : ((r & 7) == 1) ? ~t : $random(seed);
			op <= $random(seed);
		end
		@(negedge clk);
		#1;
		if (errors_y) $display("Hint: Output '%s' has %0d mismatches.", "y", errors_y);
		else $display("Hint: Output '%s' has no mismatches.", "y");
		if (errors_zero) $display("Hint: Output '%s' has %0d mismatches.", "zero", errors_zero);
		else $display("Hint: Output '%s' has no mismatches.", "zero");
		if (errors_carry) $display("Hint: Output '%s' has %0d mismatches.", "carry", errors_carry);
		else $display("Hint: Output '%s' has no mismatches.", "carry");
		if (errors_negative) $display("Hint: Output '%s' has %0d mismatches.", "negative", errors_negative);
		else $display("Hint: Output '%s' has no mismatches.", "negative");
		if (errors_overflow) $display("Hint: Output '%s' has %0d mismatches.", "overflow", errors_overflow);
		else $display("Hint: Output '%s' has no mismatches.", "overflow");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
