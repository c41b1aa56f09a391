module RefModule (
    input clk,
    input rst_n,
    input din,
    output z
);
    localparam S_IDLE = 2'd0, S_1 = 2'd1, S_11 = 2'd2, S_110 = 2'd3;
    reg [1:0] state, next;

    always @(*) begin
        case (state)
            S_IDLE: next = din ? S_1 : S_IDLE;
            S_1: next = din ? S_11 : S_IDLE;
            S_11: next = din ? S_11 : S_110;
            default: next = din ? S_1 : S_IDLE;
        endcase
    end

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) state <= S_IDLE;
        else state <= next;
    end

    assign z = (state == S_110) && din;
endmodule
