module RefModule (
    input [7:0] a,
    input [7:0] b,
    input [2:0] op,
    output reg [7:0] y,
    output zero,
    output reg carry,
    output negative,
    output reg overflow
);
    always @(*) begin
        carry = 1'b0;
        overflow = 1'b0;
        case (op)
            3'd0: begin
                {carry, y} = {1'b0, a} + {1'b0, b};
                overflow = (a[7] == b[7]) && (y[7] != a[7]);
            end
            3'd1: begin
                y = a - b;
                carry = (a < b);
                overflow = (a[7] != b[7]) && (y[7] != a[7]);
            end
            3'd2: y = a & b;
            3'd3: y = a | b;
            3'd4: y = a ^ b;
            3'd5: y = ~a;
            3'd6: begin
                y = {a[6:0], 1'b0};
                carry = a[7];
            end
            default: begin
                y = {1'b0, a[7:1]};
                carry = a[0];
            end
        endcase
    end

    assign zero = (y == 8'd0);
    assign negative = y[7];
endmodule
