module RefModule (
    input clk,
    input rst,
    input [3:0] req,
    output reg [3:0] grant
);
    reg [1:0] last;
    reg [1:0] pick;
    reg [1:0] cand;
    reg found;
    integer i;

    always @(*) begin
        found = 1'b0;
        pick = last;
        for (i = 1; i <= 4; i = i + 1) begin
            cand = last + i[1:0];
            if (!found && req[cand]) begin
                found = 1'b1;
                pick = cand;
            end
        end
    end

    always @(posedge clk) begin
        if (rst) begin
            grant <= 4'd0;
            last <= 2'd3;
        end else if (found) begin
            grant <= 4'd1 << pick;
            last <= pick;
        end else begin
            grant <= 4'd0;
        end
    end
endmodule
