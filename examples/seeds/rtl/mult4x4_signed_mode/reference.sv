module RefModule (
    input [3:0] a,
    input [3:0] b,
    input sgn,
    output [7:0] p
);
    // sign- or zero-extend to 8 bits; the low 8 bits of the 8x8 product are the exact result
    wire [7:0] ax = {{4{sgn & a[3]}}, a};
    wire [7:0] bx = {{4{sgn & b[3]}}, b};

    assign p = ax * bx;
endmodule
