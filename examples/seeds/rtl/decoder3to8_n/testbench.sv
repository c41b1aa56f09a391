`timescale 1 ps/1 ps

// Differential testbench for decoder3to8_n: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg [2:0] sel;
	reg en;
	wire [7:0] y_n_ref;
	wire [7:0] y_n_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2265;
	integer r;
	integer t;
	reg check = 0;
	integer errors_y_n = 0;

	RefModule good1 (
		.sel(sel),
		.en(en),
		.y_n(y_n_ref)
	);
	TopModule top_module1 (
		.sel(sel),
		.en(en),
		.y_n(y_n_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({y_n_ref} !== {y_n_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (y_n_ref !== y_n_dut) errors_y_n = errors_y_n + 1;
		end
	end

	initial begin
		sel = 0; en = 0;
		check = 1'b1;
		repeat (200) begin
			@(negedge clk);
			sel <= $random(seed);
			en <= ($random(seed) & 3) != 0;
		end
		@(negedge clk);
		#1;
		if (errors_y_n) $display("Hint: Output '%s' has %0d mismatches.", "y_n", errors_y_n);
		else $display("Hint: Output '%s' has no mismatches.", "y_n");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
