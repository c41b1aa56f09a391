module RefModule (
    input clk,
    input rst,
    input [5:0] duty,
    output pwm,
    output period_start
);
    reg [5:0] cnt;
    reg [5:0] duty_q;

    always @(posedge clk) begin
        if (rst) begin
            cnt <= 6'd0;
            duty_q <= 6'd0;
        end else begin
            cnt <= cnt + 6'd1;
            if (cnt == 6'd63) duty_q <= duty;
        end
    end

    assign pwm = (cnt < duty_q);
    assign period_start = (cnt == 6'd0);
endmodule
