module RefModule (
    input clk,
    input areset,
    input load,
    input [7:0] din,
    input en,
    output reg [7:0] count,
    output zero
);
    assign zero = (count == 8'd0);

    always @(posedge clk or posedge areset) begin
        if (areset) count <= 8'd0;
        else if (load) count <= din;
        else if (en && count != 8'd0) count <= count - 8'd1;
    end
endmodule
