module RefModule (
    input [7:0] a,
    input [7:0] b,
    input is_signed,
    output lt,
    output eq,
    output gt
);
    // flipping the sign bits maps two's-complement order onto unsigned order
    wire [7:0] ka = is_signed ? {~a[7], a[6:0]} : a;
    wire [7:0] kb = is_signed ? {~b[7], b[6:0]} : b;

    assign eq = (a == b);
    assign lt = (ka < kb);
    assign gt = (ka > kb);
endmodule
