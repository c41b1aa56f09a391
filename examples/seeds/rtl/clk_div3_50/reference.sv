module RefModule (
    input clk,
    input rst_n,
    output clk_out
);
    reg [1:0] cnt;
    reg hi_pos;
    reg hi_neg;

    // hi_pos is high for one clk period out of three; hi_neg is the same signal delayed by half a period.
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            cnt <= 2'd0;
            hi_pos <= 1'b0;
        end else begin
            hi_pos <= (cnt == 2'd0);
            cnt <= (cnt == 2'd2) ? 2'd0 : cnt + 2'd1;
        end
    end

    always @(negedge clk or negedge rst_n) begin
        if (!rst_n) hi_neg <= 1'b0;
        else hi_neg <= hi_pos;
    end

    assign clk_out = hi_pos | hi_neg;
endmodule
