`timescale 1 ps/1 ps

// Differential testbench for fsm_traffic_light_ped: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst;
	reg ped;
	wire green_ref;
	wire green_dut;
	wire yellow_ref;
	wire yellow_dut;
	wire red_ref;
	wire red_dut;
	wire walk_ref;
	wire walk_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 3195;
	integer r;
	integer t;
	reg check = 0;
	integer errors_green = 0;
	integer errors_yellow = 0;
	integer errors_red = 0;
	integer errors_walk = 0;

	RefModule good1 (
		.clk(clk),
		.rst(rst),
		.ped(ped),
		.green(green_ref),
		.yellow(yellow_ref),
		.red(red_ref),
		.walk(walk_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst(rst),
		.ped(ped),
		.green(green_dut),
		.yellow(yellow_dut),
		.red(red_dut),
		.walk(walk_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({green_ref, yellow_ref, red_ref, walk_ref} !== {green_dut, yellow_dut, red_dut, walk_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (green_ref !== green_dut) errors_green = errors_green + 1;
			if (yellow_ref !== yellow_dut) errors_yellow = errors_yellow + 1;
			if (red_ref !== red_dut) errors_red = errors_red + 1;
			if (walk_ref !== walk_dut) errors_walk = errors_walk + 1;
		end
	end

	initial begin
		ped = 0;
		rst = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (600) begin
			@(negedge clk);
			ped <= ($random(seed) & 7) == 0;
			r = $random(seed);
			rst <= ((r & 255) == 0) ? 1'b1 : 1'b0;
		end
		@(negedge clk);
		#1;
		if (errors_green) $display("Hint: Output '%s' has %0d mismatches.", "green", errors_green);
		else $display("Hint: Output '%s' has no mismatches.", "green");
		if (errors_yellow) $display("Hint: Output '%s' has %0d mismatches.", "yellow", errors_yellow);
		else $display("Hint: Output '%s' has no mismatches.", "yellow");
		if (errors_red) $display("Hint: Output '%s' has %0d mismatches.", "red", errors_red);
		else $display("Hint: Output '%s' has no mismatches.", "red");
		if (errors_walk) $display("Hint: Output '%s' has %0d mismatches.", "walk", errors_walk);
		else $display("Hint: Output '%s' has no mismatches.", "walk");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
