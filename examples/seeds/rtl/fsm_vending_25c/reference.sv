module RefModule (
    input clk,
    input areset,
    input nickel,
    input dime,
    input quarter,
    output reg vend,
    output reg [4:0] change,
    output reg [4:0] credit
);
    reg [5:0] coin;
    reg [5:0] total;
    reg [5:0] excess;

    always @(*) begin
        case ({quarter, dime, nickel})
            3'b001: coin = 6'd5;
            3'b010: coin = 6'd10;
            3'b100: coin = 6'd25;
            default: coin = 6'd0;
        endcase
        total = {1'b0, credit} + coin;
        excess = total - 6'd25;
    end

    always @(posedge clk or posedge areset) begin
        if (areset) begin
            vend <= 1'b0;
            change <= 5'd0;
            credit <= 5'd0;
        end else if (coin != 6'd0 && total >= 6'd25) begin
            vend <= 1'b1;
            change <= excess[4:0];
            credit <= 5'd0;
        end else begin
            vend <= 1'b0;
            change <= 5'd0;
            credit <= total[4:0];
        end
    end
endmodule
