module RefModule (
    input clk,
    input rst,
    input en,
    input din,
    output reg [7:0] q,
    output reg done
);
    reg [2:0] nbits;

    always @(posedge clk) begin
        if (rst) begin
            q <= 8'd0;
            nbits <= 3'd0;
            done <= 1'b0;
        end else begin
            done <= en && (nbits == 3'd7);
            if (en) begin
                q <= {q[6:0], din};
                nbits <= nbits + 3'd1;
            end
        end
    end
endmodule
