`timescale 1 ps/1 ps

// Differential testbench for counter_johnson5: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg areset;
	reg en;
	wire [4:0] q_ref;
	wire [4:0] q_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2683;
	integer r;
	integer t;
	reg check = 0;
	integer errors_q = 0;

	RefModule good1 (
		.clk(clk),
		.areset(areset),
		.en(en),
		.q(q_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.areset(areset),
		.en(en),
		.q(q_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({q_ref} !== {q_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (q_ref !== q_dut) errors_q = errors_q + 1;
		end
	end

	initial begin
		en = 0;
		areset = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (300) begin
			@(negedge clk);
			en <= ($random(seed) & 3) != 0;
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
		if (errors_q) $display("Hint: Output '%s' has %0d mismatches.", "q", errors_q);
		else $display("Hint: Output '%s' has no mismatches.", "q");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
