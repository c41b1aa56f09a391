`timescale 1 ps/1 ps

// Differential testbench for counter_down8_load_sat: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg areset;
	reg load;
	reg [7:0] din;
	reg en;
	wire [7:0] count_ref;
	wire [7:0] count_dut;
	wire zero_ref;
	wire zero_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 3293;
	integer r;
	integer t;
	reg check = 0;
	integer errors_count = 0;
	integer errors_zero = 0;

	RefModule good1 (
		.clk(clk),
		.areset(areset),
		.load(load),
		.din(din),
		.en(en),
		.count(count_ref),
		.zero(zero_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.areset(areset),
		.load(load),
		.din(din),
		.en(en),
		.count(count_dut),
		.zero(zero_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({count_ref, zero_ref} !== {count_dut, zero_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (count_ref !== count_dut) errors_count = errors_count + 1;
			if (zero_ref !== zero_dut) errors_zero = errors_zero + 1;
		end
	end

	initial begin
		load = 0; din = 0; en = 0;
		areset = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (500) begin
			@(negedge clk);
			load <= ($random(seed) & 15) == 0;
			// small values often, so the counter regularly reaches zero and saturates
			din <= ($random(seed) & 1) ? ($random(seed) & 8'h0F) : $random(seed);
			en <= ($random(seed) & 7) != 0;
			r = $random(seed);
			if ((r & 63) == 0) begin
				// assert between edges and hold across the next rising edge
				#2 areset = 1'b1;
			end else if ((r & 63) == 1) begin
				// short pulse that ends before the next rising edge: only an async reset sees it
				#1 areset = 1'b1;
				#2 areset = 1'b0;
			end else begin
				areset <= 1'b0;
			end
		end
		@(negedge clk);
		#1;
		if (errors_count) $display("Hint: Output '%s' has %0d mismatches.", "count", errors_count);
		else $display("Hint: Output '%s' has no mismatches.", "count");
		if (errors_zero) $display("Hint: Output '%s' has %0d mismatches.", "zero", errors_zero);
		else $display("Hint: Output '%s' has no mismatches.", "zero");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
