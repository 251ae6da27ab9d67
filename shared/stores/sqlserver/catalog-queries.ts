// Lines of T-SQL two catalog snapshots share (the transport table's, statements.ts, and the flow-state table's,
// flow-statements.ts): the primary key's columns, then every index with its columns, of the table @object_id.

export const KEY_AND_INDEX_SNAPSHOT: readonly string[] = [
      'SELECT kc.name AS constraint_name, col.name AS column_name, ic.key_ordinal',
      'FROM sys.key_constraints AS kc',
      'INNER JOIN sys.index_columns AS ic ON ic.object_id = kc.parent_object_id AND ic.index_id = kc.unique_index_id',
      'INNER JOIN sys.columns AS col ON col.object_id = ic.object_id AND col.column_id = ic.column_id',
      "WHERE kc.parent_object_id = @object_id AND kc.type = 'PK' AND ic.key_ordinal > 0",
      'ORDER BY ic.key_ordinal;',
      'SELECT i.name AS index_name, i.index_id, i.type_desc, i.is_unique, i.is_primary_key, i.is_disabled,',
      '       i.is_hypothetical, i.has_filter, i.filter_definition, col.name AS column_name, ic.key_ordinal, ic.is_descending_key,',
      '       ic.is_included_column',
      'FROM sys.indexes AS i',
      'LEFT JOIN sys.index_columns AS ic ON ic.object_id = i.object_id AND ic.index_id = i.index_id',
      'LEFT JOIN sys.columns AS col ON col.object_id = ic.object_id AND col.column_id = ic.column_id',
      'WHERE i.object_id = @object_id AND i.index_id > 0',
      'ORDER BY i.index_id, ic.key_ordinal;',
];
