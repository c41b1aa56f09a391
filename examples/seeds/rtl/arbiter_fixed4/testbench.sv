`timescale 1 ps/1 ps

// Differential testbench for arbiter_fixed4: RefModule (golden) against TopModule (candidate).
// Inputs change on the falling edge of clk (non-blocking, so they never race the checker);
// every output is compared with !== on both clock edges once the initial reset has been applied.
module tb();

	reg clk = 0;
	initial forever
		#5 clk = ~clk;

	reg [3:0] req;
	wire [3:0] grant_ref;
	wire [3:0] grant_dut;
	wire busy_ref;
	wire busy_dut;

	integer errors = 0;
	integer clocks = 0;
	integer seed = 2420;
	integer r;
	integer t;
	reg check = 0;
	integer errors_grant = 0;
	integer errors_busy = 0;

	RefModule good1 (
		.req(req),
		.grant(grant_ref),
		.busy(busy_ref)
	);
	TopModule top_module1 (
		.req(req),
		.grant(grant_dut),
		.busy(busy_dut)
	);

	always @(posedge clk, negedge clk) begin
		if (check) begin
			clocks = clocks + 1;
			if ({grant_ref, busy_ref} !== {grant_dut, busy_dut}) begin
				if (errors == 0) $display("First mismatch at time %0d ps", $time);
				errors = errors + 1;
			end
			if (grant_ref !== grant_dut) errors_grant = errors_grant + 1;
			if (busy_ref !== busy_dut) errors_busy = errors_busy + 1;
		end
	end

	initial begin
		req = 0;
		check = 1'b1;
		repeat (200) begin
			@(negedge clk);
			// each request bit is set with probability 1/4 so the lower-priority requesters do win sometimes
			req <= {($random(seed) & 3) == 0, ($random(seed) & 3) == 0, ($random(seed) & 3) == 0, ($random(seed) & 3) == 0};
		end
		@(negedge clk);
		#1;
		if (errors_grant) $display("Hint: Output '%s' has %0d mismatches.", "grant", errors_grant);
		else $display("Hint: Output '%s' has no mismatches.", "grant");
		if (errors_busy) $display("Hint: Output '%s' has %0d mismatches.", "busy", errors_busy);
		else $display("Hint: Output '%s' has no mismatches.", "busy");
		$display("Mismatches: %1d in %1d samples", errors, clocks);
		$finish;
	end

	// timeout guard
	initial begin
		#1000000 $display("TIMEOUT");
		$finish;
	end

endmodule
