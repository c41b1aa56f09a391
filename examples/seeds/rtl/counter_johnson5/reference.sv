module RefModule (
    input clk,
    input areset,
    input en,
    output reg [4:0] q
);
    always @(posedge clk or posedge areset) begin
        if (areset) q <= 5'd0;
        else if (en) q <= {q[3:0], ~q[4]};
    end
endmodule
