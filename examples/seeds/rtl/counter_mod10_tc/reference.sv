module RefModule (
    input clk,
    input rst,
    input en,
    output reg [3:0] q,
    output carry
);
    assign carry = en && (q == 4'd9);

    always @(posedge clk) begin
        if (rst) q <= 4'd0;
        else if (en) q <= (q == 4'd9) ? 4'd0 : q + 4'd1;
    end
endmodule
