module RefModule (
    input [7:0] in,
    output reg [2:0] idx,
    output valid
);
    integer i;

    assign valid = |in;

    always @(*) begin
        idx = 3'd0;
        for (i = 0; i < 8; i = i + 1)
            if (in[i]) idx = i[2:0];
    end
endmodule
