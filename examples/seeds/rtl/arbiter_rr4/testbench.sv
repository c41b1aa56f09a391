`timescale 1 ps/1 ps

// Differential testbench for arbiter_rr4: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg rst;
	reg [3:0] req;
	wire [3:0] grant_ref;
	wire [3:0] grant_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2120;
	integer r;
	integer t;
	reg check = 0;
	integer errors_grant = 0;

	RefModule good1 (
		.clk(clk),
		.rst(rst),
		.req(req),
		.grant(grant_ref)
	);
	TopModule top_module1 (
		.clk(clk),
		.rst(rst),
		.req(req),
		.grant(grant_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({grant_ref} !== {grant_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (grant_ref !== grant_dut) errors_grant = errors_grant + 1;
		end
	end

	initial begin
		req = 0;
		rst = 1'b1;
		// hold reset across two rising edges, then start checking
		@(negedge clk);
		@(negedge clk);
		check <= 1'b1;
		repeat (600) begin
			@(negedge clk);
			req <= ($random(seed) & 7) == 0 ? 4'd0 : $random(seed);
			r = $random(seed);
			rst <= ((r & 127) == 0) ? 1'b1 : 1'b0;
		end
		@(negedge clk);
		#1;
		if (errors_grant) $display("Hint: Output '%s' has %0d mismatches.", "grant", errors_grant);
		else $display("Hint: Output '%s' has no mismatches.", "grant");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
