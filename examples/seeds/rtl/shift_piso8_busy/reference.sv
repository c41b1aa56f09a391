module RefModule (
    input clk,
    input rst_n,
    input load,
    input [7:0] din,
    output sout,
    output busy
);
    reg [7:0] sh;
    reg [3:0] left;

    assign busy = (left != 4'd0);
    assign sout = busy ? sh[7] : 1'b0;

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            sh <= 8'd0;
            left <= 4'd0;
        end else if (load) begin
            sh <= din;
            left <= 4'd8;
        end else if (left != 4'd0) begin
            sh <= {sh[6:0], 1'b0};
            left <= left - 4'd1;
        end
    end
endmodule
