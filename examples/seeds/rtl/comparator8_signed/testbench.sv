`timescale 1 ps/1 ps

// Differential testbench for comparator8_signed: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg [7:0] a;
	reg [7:0] b;
	reg is_signed;
	wire lt_ref;
	wire lt_dut;
	wire eq_ref;
	wire eq_dut;
	wire gt_ref;
	wire gt_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2865;
	integer r;
	integer t;
	reg check = 0;
	integer errors_lt = 0;
	integer errors_eq = 0;
	integer errors_gt = 0;

	RefModule good1 (
		.a(a),
		.b(b),
		.is_signed(is_signed),
		.lt(lt_ref),
		.eq(eq_ref),
		.gt(gt_ref)
	);
	TopModule top_module1 (
		.a(a),
		.b(b),
		.is_signed(is_signed),
		.lt(lt_dut),
		.eq(eq_dut),
		.gt(gt_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({lt_ref, eq_ref, gt_ref} !== {lt_dut, eq_dut, gt_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (lt_ref !== lt_dut) errors_lt = errors_lt + 1;
			if (eq_ref !== eq_dut) errors_eq = errors_eq + 1;
			if (gt_ref !== gt_dut) errors_gt = errors_gt + 1;
		end
	end

	initial begin
		a = 0; b = 0; is_signed = 0;
		check = 1'b1;
		repeat (200) begin
			@(negedge clk);
			t = $random(seed);
			a <= t;
			// b is often equal to a or differs from it in a single bit, so every bit position decides the result sometimes
			r = $random(seed);
			case (r & 3)
			    0: b <= t;
			    1: b <= t ^ (1 << ($random(seed) & 7));
			    default: b <= $random(seed);
			endcase
			is_signed <= $random(seed);
		end
		@(negedge clk);
		#1;
		if (errors_lt) $display("Hint: Output '%s' has %0d mismatches.", "lt", errors_lt);
		else $display("Hint: Output '%s' has no mismatches.", "lt");
		if (errors_eq) $display("Hint: Output '%s' has %0d mismatches.", "eq", errors_eq);
		else $display("Hint: Output '%s' has no mismatches.", "eq");
		if (errors_gt) $display("Hint: Output '%s' has %0d mismatches.", "gt", errors_gt);
		else $display("Hint: Output '%s' has no mismatches.", "gt");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
