`timescale 1 ps/1 ps

// Differential testbench for mux4_8bit: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg [7:0] d0;
	reg [7:0] d1;
	reg [7:0] d2;
	reg [7:0] d3;
	reg [1:0] sel;
	wire [7:0] y_ref;
	wire [7:0] y_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 1868;
	integer r;
	integer t;
	reg check = 0;
	integer errors_y = 0;

	RefModule good1 (
		.d0(d0),
		.d1(d1),
		.d2(d2),
		.d3(d3),
		.sel(sel),
		.y(y_ref)
	);
	TopModule top_module1 (
		.d0(d0),
		.d1(d1),
		.d2(d2),
		.d3(d3),
		.sel(sel),
		.y(y_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({y_ref} !== {y_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (y_ref !== y_dut) errors_y = errors_y + 1;
		end
	end

	initial begin
		d0 = 0; d1 = 0; d2 = 0; d3 = 0; sel = 0;
		check = 1'b1;
		repeat (200) begin
			@(negedge clk);
			d0 <= $random(seed);
			d1 <= $random(seed);
			d2 <= $random(seed);
			d3 <= $random(seed);
			sel <= $random(seed);
		end
		@(negedge clk);
		#1;
		if (errors_y) $display("Hint: Output '%s' has %0d mismatches.", "y", errors_y);
		else $display("Hint: Output '%s' has no mismatches.", "y");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
