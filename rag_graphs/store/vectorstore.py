"""langchain-milvus's vector store over a chunk collection, with a new collection's indexes
built through ``Collection.index``.

Imported only where a ``ChunkIndex`` opens (langchain-milvus is heavy to import)."""

from __future__ import annotations

from langchain_milvus import Milvus

from rag_graphs.store.collection import Collection


class ChunkVectorStore(Milvus):
    """``Milvus`` that indexes the collection it creates without pymilvus's wait.

    pymilvus's ``create_index`` sleeps half a second before it first asks whether an index is
    built, once per vector field: a new store's dense and BM25 indexes cost a second of sleep
    though Milvus builds an empty collection's index at once. ``Milvus._create_index`` finds the
    indexes built here and leaves them; everything else is langchain-milvus's own."""

    def _create_collection(self, embeddings: list[list], metadatas: list[dict] | None = None) -> None:
        super()._create_collection(embeddings, metadatas)
        uri = str(self._connection_args.get("uri", ""))
        Collection(self.client, self.collection_name, uri=uri).index(self._index_param_map)
