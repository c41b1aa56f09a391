module RefModule (
    input clk,
    input rst_n,
    input en,
    input up,
    output reg [3:0] count
);
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) count <= 4'd0;
        else if (en) begin
            if (up) count <= count + 4'd1;
            else count <= count - 4'd1;
        end
    end
endmodule
