`timescale 1 ps/1 ps

// Differential testbench for priority_encoder8: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg [7:0] in;
	wire [2:0] idx_ref;
	wire [2:0] idx_dut;
	wire valid_ref;
	wire valid_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2785;
	integer r;
	integer t;
	reg check = 0;
	integer errors_idx = 0;
	integer errors_valid = 0;

	RefModule good1 (
		.in(in),
		.idx(idx_ref),
		.valid(valid_ref)
	);
	TopModule top_module1 (
		.in(in),
		.idx(idx_dut),
		.valid(valid_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({idx_ref, valid_ref} !== {idx_dut, valid_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (idx_ref !== idx_dut) errors_idx = errors_idx + 1;
			if (valid_ref !== valid_dut) errors_valid = errors_valid + 1;
		end
	end

	initial begin
		in = 0;
		check = 1'b1;
		repeat (200) begin
			@(negedge clk);
			r = $random(seed);
			// sparse inputs so every position is the highest set bit sometimes, and zero occurs
			case (r & 3)
			    0: in <= 8'd1 << ($random(seed) & 7);
			    1: in <= $random(seed) & $random(seed) & $random(seed);
			    2: in <= $random(seed) & 8'h0F;
			    default: in <= $random(seed);
			endcase
		end
		@(negedge clk);
		#1;
		if (errors_idx) $display("Hint: Output '%s' has %0d mismatches.", "idx", errors_idx);
		else $display("Hint: Output '%s' has no mismatches.", "idx");
		if (errors_valid) $display("Hint: Output '%s' has %0d mismatches.", "valid", errors_valid);
		else $display("Hint: Output '%s' has no mismatches.", "valid");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
