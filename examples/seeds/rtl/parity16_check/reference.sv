module RefModule (
    input [15:0] data,
    input odd,
    input rx_parity,
    output parity,
    output error
);
    assign parity = (^data) ^ odd;
    assign error = rx_parity ^ parity;
endmodule
