`timescale 1 ps/1 ps

// Differential testbench for barrel_shifter16: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg [15:0] din;
	reg [3:0] shamt;
	reg dir;
	reg rot;
	wire [15:0] dout_ref;
	wire [15:0] dout_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2587;
	integer r;
	integer t;
	reg check = 0;
	integer errors_dout = 0;

	RefModule good1 (
		.din(din),
		.shamt(shamt),
		.dir(dir),
		.rot(rot),
		.dout(dout_ref)
	);
	TopModule top_module1 (
		.din(din),
		.shamt(shamt),
		.dir(dir),
		.rot(rot),
		.dout(dout_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({dout_ref} !== {dout_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (dout_ref !== dout_dut) errors_dout = errors_dout + 1;
		end
	end

	initial begin
		din = 16'h8001; shamt = 0; dir = 0; rot = 0;
		check = 1'b1;
		repeat (200) begin
			@(negedge clk);
			din <= $random(seed);
			shamt <= $random(seed);
			dir <= $random(seed);
			rot <= $random(seed);
		end
		@(negedge clk);
		#1;
		if (errors_dout) $display("Hint: Output '%s' has %0d mismatches.", "dout", errors_dout);
		else $display("Hint: Output '%s' has no mismatches.", "dout");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
