// Host storage for the Functions runtime (AzureWebJobsStorage) and the Flex Consumption deployment package.
//
// Identity only: shared-key access is disabled, so no connection string or account key exists anywhere. The app
// reaches the account with its user-assigned identity (AzureWebJobsStorage__accountName / __credential /
// __clientId). The identity gets Storage Blob Data Owner on the account, which the docs name as covering the
// basic needs of host storage: timer singleton leases (blob leases), the host id lock, function keys
// (azure-webjobs-secrets) and reading the deployment package. It also gets Storage Table Data Contributor: the
// host writes its diagnostic events to Table storage through AzureWebJobsStorage (without table rights it logs
// AZFD0003, "unable to write diagnostic events"). And Storage Queue Data Contributor: with DRAIN_TRIGGER=queue
// every publish sends a drain request on the `drainRequestQueue` queue and the drain-requested function's queue
// trigger reads it (and moves a failing one to `<queue>-poison`); both queues are created here.

@description('Storage account name: 3-24 lowercase letters and digits, globally unique.')
@minLength(3)
@maxLength(24)
param name string

@description('Azure region.')
param location string

@description('Tags for the resources.')
param tags object = {}

@description('Blob container that holds the deployment package (one container per function app).')
param deploymentContainerName string

@description('Object (principal) id of the function app identity.')
param principalId string

@description('Storage queue of the drain requests (DRAIN_REQUEST_QUEUE); its poison queue is <name>-poison.')
@minLength(3)
@maxLength(56)
param drainRequestQueue string = 'asyncresponse-drain'

@description('Object id of the SQL server\'s identity that announces T-SQL publishes (sp_invoke_external_rest_endpoint Put Message on the drain-request queue); empty = no announce.')
param sqlServerPrincipalId string = ''

// Built-in roles: Storage Blob Data Owner, Storage Table Data Contributor, Storage Queue Data Contributor,
// Storage Queue Data Message Sender (the SQL server's announce: add messages to the one queue, nothing else).
var storageBlobDataOwnerRoleId = 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
var storageQueueDataMessageSenderRoleId = 'c6a89b2d-59bc-44d0-9896-0f6e12d7b80a'
var storageTableDataContributorRoleId = '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
var storageQueueDataContributorRoleId = '974c5e8b-45b9-4653-ba55-5f855dd0fb88'

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: 'Standard_LRS'
  }
  properties: {
    accessTier: 'Hot'
    allowBlobPublicAccess: false
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      defaultAction: 'Allow'
      bypass: 'AzureServices'
    }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: {
    publicAccess: 'None'
  }
}

resource blobDataOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, principalId, storageBlobDataOwnerRoleId)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataOwnerRoleId)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Functions host storage (timer leases, keys) and the deployment package, by managed identity'
  }
}

resource tableDataContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, principalId, storageTableDataContributorRoleId)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataContributorRoleId)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Functions host diagnostic events (Table storage), by managed identity'
  }
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource drainRequests 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: drainRequestQueue
}

resource drainRequestsPoison 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: '${drainRequestQueue}-poison'
}

resource queueDataContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, principalId, storageQueueDataContributorRoleId)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageQueueDataContributorRoleId)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Drain requests: the app sends them and its queue trigger reads them (and the poison queue), by managed identity'
  }
}

resource announceSender 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(sqlServerPrincipalId)) {
  name: guid(drainRequests.id, sqlServerPrincipalId, storageQueueDataMessageSenderRoleId)
  scope: drainRequests
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageQueueDataMessageSenderRoleId)
    principalId: sqlServerPrincipalId
    principalType: 'ServicePrincipal'
    description: 'The SQL server announces T-SQL publishes: Put Message of a drain request (npm run schema -- announce)'
  }
}

@description('Storage queue of the drain requests (DRAIN_REQUEST_QUEUE).')
output drainRequestQueue string = drainRequests.name

@description('Queue service endpoint (https://<account>.queue.core.windows.net/).')
output queueEndpoint string = storage.properties.primaryEndpoints.queue

@description('Storage account name (AzureWebJobsStorage__accountName).')
output name string = storage.name

@description('URL of the deployment package container (functionAppConfig.deployment.storage.value).')
output deploymentContainerUrl string = '${storage.properties.primaryEndpoints.blob}${deploymentContainer.name}'
