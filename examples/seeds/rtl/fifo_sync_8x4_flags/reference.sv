module RefModule (
    input clk,
    input rst_n,
    input wr_en,
    input rd_en,
    input [3:0] wdata,
    output reg [3:0] rdata,
    output full,
    output empty,
    output almost_full,
    output almost_empty,
    output reg overflow,
    output reg underflow
);
    reg [3:0] mem [0:7];
    reg [2:0] wr_ptr, rd_ptr;
    reg [3:0] count;

    assign full = (count == 4'd8);
    assign empty = (count == 4'd0);
    assign almost_full = (count >= 4'd6);
    assign almost_empty = (count <= 4'd1);

    wire do_wr = wr_en && !full;
    wire do_rd = rd_en && !empty;

    always @(posedge clk) begin
        if (do_wr) mem[wr_ptr] <= wdata;
    end

    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) begin
            wr_ptr <= 3'd0;
            rd_ptr <= 3'd0;
            count <= 4'd0;
            rdata <= 4'd0;
            overflow <= 1'b0;
            underflow <= 1'b0;
        end else begin
            if (do_wr) wr_ptr <= wr_ptr + 3'd1;
            if (do_rd) begin
                rd_ptr <= rd_ptr + 3'd1;
                rdata <= mem[rd_ptr];
            end
            count <= count + {3'b0, do_wr} - {3'b0, do_rd};
            if (wr_en && full) overflow <= 1'b1;
            if (rd_en && empty) underflow <= 1'b1;
        end
    end
endmodule
