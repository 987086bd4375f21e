// A custom-op library for tests/python/test_mlir.py: dynrep_mlir::scale(Tensor x, float s),
// written in linalg with dynamic dims; the lowering calls it for each node and inlines it.
func.func @"dynrep_mlir::scale.default"(%x: tensor<?x?xf32>, %s: f64) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = tensor.dim %x, %c0 : tensor<?x?xf32>
  %cols = tensor.dim %x, %c1 : tensor<?x?xf32>
  %init = tensor.empty(%rows, %cols) : tensor<?x?xf32>
  %factor = arith.truncf %s : f64 to f32
  %out = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x?xf32>) outs(%init : tensor<?x?xf32>) {
  ^bb0(%a: f32, %unused: f32):
    %m = arith.mulf %a, %factor : f32
    linalg.yield %m : f32
  } -> tensor<?x?xf32>
  return %out : tensor<?x?xf32>
}
