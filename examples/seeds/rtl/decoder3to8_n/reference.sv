module RefModule (
    input [2:0] sel,
    input en,
    output [7:0] y_n
);
    assign y_n = en ? ~(8'd1 << sel) : 8'hFF;
endmodule
