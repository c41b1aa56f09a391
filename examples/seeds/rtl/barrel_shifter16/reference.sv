module RefModule (
    input [15:0] din,
    input [3:0] shamt,
    input dir,
    input rot,
    output reg [15:0] dout
);
    always @(*) begin
        case ({rot, dir})
            2'b00: dout = din << shamt;
            2'b01: dout = din >> shamt;
            2'b10: dout = (din << shamt) | (din >> (5'd16 - {1'b0, shamt}));
            default: dout = (din >> shamt) | (din << (5'd16 - {1'b0, shamt}));
        endcase
    end
endmodule
