module RefModule (
    input clk,
    input rst,
    input ped,
    output green,
    output yellow,
    output red,
    output walk
);
    localparam GREEN = 2'd0, YELLOW = 2'd1, RED = 2'd2;
    reg [1:0] state;
    reg [2:0] t;

    always @(posedge clk) begin
        if (rst) begin
            state <= GREEN;
            t <= 3'd0;
        end else begin
            case (state)
                GREEN:
                    if (t == 3'd7 || (t >= 3'd2 && ped)) begin state <= YELLOW; t <= 3'd0; end
                    else t <= t + 3'd1;
                YELLOW:
                    if (t == 3'd1) begin state <= RED; t <= 3'd0; end
                    else t <= t + 3'd1;
                default:
                    if (t == 3'd4) begin state <= GREEN; t <= 3'd0; end
                    else t <= t + 3'd1;
            endcase
        end
    end

    assign green = (state == GREEN);
    assign yellow = (state == YELLOW);
    assign red = (state == RED);
    assign walk = (state == RED);
endmodule
