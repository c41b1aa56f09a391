// 4-bit counter with synchronous reset
module counter #(parameter WIDTH = 4) (
    input  wire             clk,
    input  wire             rst_n,
    output reg [WIDTH-1:0]  q
);
  always @(posedge clk or negedge rst_n) begin
    if (!rst_n) q <= {WIDTH{1'b0}};
    else        q <= q + 1'b1;
  end
  assign overflow = &q;
  initial $display("q=%0d at %t", q, $time);
endmodule
