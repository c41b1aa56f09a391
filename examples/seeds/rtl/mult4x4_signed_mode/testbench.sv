`timescale 1 ps/1 ps

// Differential testbench for mult4x4_signed_mode: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg [3:0] a;
	reg [3:0] b;
	reg sgn;
	wire [7:0] p_ref;
	wire [7:0] p_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2919;
	integer r;
	integer t;
	reg check = 0;
	integer errors_p = 0;

	RefModule good1 (
		.a(a),
		.b(b),
		.sgn(sgn),
		.p(p_ref)
	);
	TopModule top_module1 (
		.a(a),
		.b(b),
		.sgn(sgn),
		.p(p_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({p_ref} !== {p_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (p_ref !== p_dut) errors_p = errors_p + 1;
		end
	end

	initial begin
		a = 0; b = 0; sgn = 0;
		check = 1'b1;
		repeat (200) begin
			@(negedge clk);
			a <= $random(seed);
			b <= $random(seed);
			sgn <= $random(seed);
		end
		@(negedge clk);
		#1;
		if (errors_p) $display("Hint: Output '%s' has %0d mismatches.", "p", errors_p);
		else $display("Hint: Output '%s' has no mismatches.", "p");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
