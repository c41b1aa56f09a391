module RefModule (
    input clk,
    input areset,
    input din,
    output reg rise,
    output reg fall
);
    reg prev;

    always @(posedge clk or posedge areset) begin
        if (areset) begin
            prev <= 1'b0;
            rise <= 1'b0;
            fall <= 1'b0;
        end else begin
            prev <= din;
            rise <= din & ~prev;
            fall <= ~din & prev;
        end
    end
endmodule
