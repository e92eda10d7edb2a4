// tokenbatch._core: the scheduler, the batch and the tokenizer for Python.
// The Python package (python/tokenbatch) is the public face; see its modules.
#include <nanobind/nanobind.h>

#include "python/py_batch.h"
#include "python/py_scheduler.h"
#include "python/py_tokenizer.h"

NB_MODULE(_core, m) {
  m.doc() = "tokenbatch's C++ engine: token-budget batching, exact tokenizers (see the tokenbatch package)";
  tokenbatch::python::BindBatch(m);
  tokenbatch::python::BindTokenizer(m);
  tokenbatch::python::BindScheduler(m);
}
