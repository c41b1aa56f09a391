module RefModule (
    input clk,
    input rst,
    input en,
    input load,
    input [15:0] seed_in,
    output reg [15:0] q
);
    wire fb = q[15] ^ q[13] ^ q[12] ^ q[10];

    always @(posedge clk) begin
        if (rst) q <= 16'hACE1;
        else if (load) q <= seed_in;
        else if (en) q <= {q[14:0], fb};
    end
endmodule
