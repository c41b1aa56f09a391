`timescale 1 ps/1 ps

// Differential testbench for parity16_check: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg [15:0] data;
	reg odd;
	reg rx_parity;
	wire parity_ref;
	wire parity_dut;
	wire error_ref;
	wire error_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2373;
	integer r;
	integer t;
	reg check = 0;
	integer errors_parity = 0;
	integer errors_error = 0;

	RefModule good1 (
		.data(data),
		.odd(odd),
		.rx_parity(rx_parity),
		.parity(parity_ref),
		.error(error_ref)
	);
	TopModule top_module1 (
		.data(data),
		.odd(odd),
		.rx_parity(rx_parity),
		.parity(parity_dut),
		.error(error_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({parity_ref, error_ref} !== {parity_dut, error_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (parity_ref !== parity_dut) errors_parity = errors_parity + 1;
			if (error_ref !== error_dut) errors_error = errors_error + 1;
		end
	end

	initial begin
		data = 0; odd = 0; rx_parity = 0;
		check = 1'b1;
		repeat (200) begin
			@(negedge clk);
			data <= $random(seed);
			odd <= $random(seed);
			rx_parity <= $random(seed);
		end
		@(negedge clk);
		#1;
		if (errors_parity) $display("Hint: Output '%s' has %0d mismatches.", "parity", errors_parity);
		else $display("Hint: Output '%s' has no mismatches.", "parity");
		if (errors_error) $display("Hint: Output '%s' has %0d mismatches.", "error", errors_error);
		else $display("Hint: Output '%s' has no mismatches.", "error");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
