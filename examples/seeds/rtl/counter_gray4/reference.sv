module RefModule (
    input clk,
    input rst_n,
    input en,
    output [3:0] gray
);
    reg [3:0] bin;

    assign gray = bin ^ (bin >> 1);

    always @(posedge clk) begin
        if (!rst_n) bin <= 4'd0;
        else if (en) bin <= bin + 4'd1;
    end
endmodule
