module RefModule (
    input clk,
    input rst,
    input en,
    output reg [7:0] count,
    output tc
);
    assign tc = en && (count == 8'hFF);

    always @(posedge clk) begin
        if (rst) count <= 8'd0;
        else if (en) count <= count + 8'd1;
    end
endmodule
