`timescale 1 ps/1 ps

// Differential testbench for fsm_vending_25c: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg areset;
	reg nickel;
	reg dime;
	reg quarter;
	wire vend_ref;
	wire vend_dut;
	wire [4:0] change_ref;
	wire [4:0] change_dut;
	wire [4:0] credit_ref;
	wire [4:0] credit_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2465;
	integer r;
	integer t;
	reg check = 0;
	integer errors_vend = 0;
	integer errors_change = 0;
	integer errors_credit = 0;

	RefModule good1 (
		.clk(clk),
		.areset(areset),
		.nickel(nickel),
		.dime(dime),
		.quarter(quarter),
		.vend(vend_ref),
		.change(change_ref),
		.credit(credit_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.areset(areset),
		.nickel(nickel),
		.dime(dime),
		.quarter(quarter),
		.vend(vend_dut),
		.change(change_dut),
		.credit(credit_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({vend_ref, change_ref, credit_ref} !== {vend_dut, change_dut, credit_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (vend_ref !== vend_dut) errors_vend = errors_vend + 1;
			if (change_ref !== change_dut) errors_change = errors_change + 1;
			if (credit_ref !== credit_dut) errors_credit = errors_credit + 1;
		end
	end

	initial begin
		nickel = 0; dime = 0; quarter = 0;
		areset = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (600) begin
			@(negedge clk);
			r = $random(seed) & 15;
			// mostly single coins, sometimes none, sometimes an invalid double insert
			nickel <= (r < 4) || (r == 14);
			dime <= (r >= 4 && r < 8) || (r == 14) || (r == 15);
			quarter <= (r >= 8 && r < 10) || (r == 15);
			r = $random(seed);
			if ((r & 127) == 0) begin
				// assert between edges and hold across the next rising edge
				#2 areset = 1'b1;
			end else if ((r & 127) == 1) begin
				// short pulse that ends before the next rising edge: only an async reset sees it
				#1 areset = 1'b1;
				#2 areset = 1'b0;
			end else begin
				areset <= 1'b0;
			end
		end
		@(negedge clk);
		#1;
		if (errors_vend) $display("Hint: Output '%s' has %0d mismatches.", "vend", errors_vend);
		else $display("Hint: Output '%s' has no mismatches.", "vend");
		if (errors_change) $display("Hint: Output '%s' has %0d mismatches.", "change", errors_change);
		else $display("Hint: Output '%s' has no mismatches.", "change");
		if (errors_credit) $display("Hint: Output '%s' has %0d mismatches.", "credit", errors_credit);
		else $display("Hint: Output '%s' has no mismatches.", "credit");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
