module RefModule (
    input clk,
    input rst,
    input push,
    input pop,
    input [7:0] din,
    output [7:0] dout,
    output full,
    output empty,
    output reg [2:0] count
);
    reg [7:0] mem [0:3];
    reg [1:0] wr_ptr, rd_ptr;

    assign full = (count == 3'd4);
    assign empty = (count == 3'd0);
    assign dout = empty ? 8'd0 : mem[rd_ptr];

    wire do_push = push && !full;
    wire do_pop = pop && !empty;

    always @(posedge clk) begin
        if (do_push) mem[wr_ptr] <= din;
    end

    always @(posedge clk) begin
        if (rst) begin
            wr_ptr <= 2'd0;
            rd_ptr <= 2'd0;
            count <= 3'd0;
        end else begin
            if (do_push) wr_ptr <= wr_ptr + 2'd1;
            if (do_pop) rd_ptr <= rd_ptr + 2'd1;
            count <= count + {2'b0, do_push} - {2'b0, do_pop};
        end
    end
endmodule
